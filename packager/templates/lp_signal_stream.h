/* lp_signal_stream.h: TFLite Micro's signal-library operators that keep samples from one invocation to the
   next (SignalDelay, SignalOverlapAdd, SignalFramer, SignalStacker), bit-exact with TFLite Micro. Their
   state is the bundle's (static, restored by <model>_reset()): TFLite Micro's circular buffers are kept
   here as the samples they hold, oldest first, from element 0 of each row's state, with the count held
   where the operator needs one. Outputs TFLite Micro leaves unwritten (a frame not yet complete) are 0.
   Sizes are in elements; the compiler checks them against the tensors. Each returns 0. */
#ifndef LP_SIGNAL_STREAM_H
#define LP_SIGNAL_STREAM_H

#include <stdbool.h>
#include <stdint.h>

/* SignalDelay: each of `rows` rows of frame_size samples comes out delay_length samples later; `state`
   holds each row's last delay_length samples (zeros after a reset). */
static inline int32_t lp_signal_delay_s16(const int16_t *input, int16_t *state, int16_t *output, int32_t rows,
                                          int32_t frame_size, int32_t delay_length)
{
  int32_t row, k;
  for (row = 0; row < rows; ++row) {
    const int16_t *in = input + row * frame_size;
    int16_t *history = state + row * delay_length;
    int16_t *out = output + row * frame_size;
    for (k = 0; k < frame_size; ++k) {
      out[k] = k < delay_length ? history[k] : in[k - delay_length];
    }
    for (k = 0; k < delay_length; ++k) {
      history[k] = k + frame_size < delay_length ? history[k + frame_size] : in[k + frame_size - delay_length];
    }
  }
  return 0;
}

/* SignalOverlapAdd (int16): for each of `rows` rows, each of its `frames` frames of frame_size samples is
   added into the row's `state` (frame_size samples, saturated to int16), whose first frame_step samples are
   the output, then the state moves frame_step samples down, zeros after. frame_step <= frame_size. */
static inline int32_t lp_signal_overlap_add_s16(const int16_t *input, int16_t *state, int16_t *output,
                                                int32_t rows, int32_t frames, int32_t frame_size,
                                                int32_t frame_step)
{
  int32_t row, frame, k;
  for (row = 0; row < rows; ++row) {
    int16_t *buffer = state + row * frame_size;
    for (frame = 0; frame < frames; ++frame) {
      const int16_t *in = input + (row * frames + frame) * frame_size;
      int16_t *out = output + (row * frames + frame) * frame_step;
      for (k = 0; k < frame_size; ++k) {
        const int32_t sum = (int32_t)in[k] + buffer[k];
        buffer[k] = (int16_t)(sum < INT16_MIN ? INT16_MIN : sum > INT16_MAX ? INT16_MAX : sum);
      }
      for (k = 0; k < frame_step; ++k) {
        out[k] = buffer[k];
      }
      for (k = 0; k < frame_size; ++k) {
        buffer[k] = k + frame_step < frame_size ? buffer[k + frame_step] : 0;
      }
    }
  }
  return 0;
}

/* SignalOverlapAdd (float): as the int16 one, the sums in float without saturation. */
static inline int32_t lp_signal_overlap_add_f32(const float *input, float *state, float *output, int32_t rows,
                                                int32_t frames, int32_t frame_size, int32_t frame_step)
{
  int32_t row, frame, k;
  for (row = 0; row < rows; ++row) {
    float *buffer = state + row * frame_size;
    for (frame = 0; frame < frames; ++frame) {
      const float *in = input + (row * frames + frame) * frame_size;
      float *out = output + (row * frames + frame) * frame_step;
      for (k = 0; k < frame_size; ++k) {
        buffer[k] += in[k];
      }
      for (k = 0; k < frame_step; ++k) {
        out[k] = buffer[k];
      }
      for (k = 0; k < frame_size; ++k) {
        buffer[k] = k + frame_step < frame_size ? buffer[k + frame_step] : 0.0f;
      }
    }
  }
  return 0;
}

/* The samples of a FIFO held in `buffer` (count of them in *available): appends count samples. */
static inline void lp_signal_fifo_write(int16_t *buffer, int32_t *available, const int16_t *values, int32_t count)
{
  int32_t k;
  for (k = 0; k < count; ++k) {
    buffer[*available + k] = values[k];
  }
  *available += count;
}

/* Drops the oldest count samples of the FIFO. */
static inline void lp_signal_fifo_discard(int16_t *buffer, int32_t *available, int32_t count)
{
  int32_t k;
  for (k = 0; k + count < *available; ++k) {
    buffer[k] = buffer[k + count];
  }
  *available -= count;
}

/* Once the FIFO holds `size` samples: copies them out (oldest first), drops the oldest `step` and returns true;
   else writes 0s and returns false (TFLite Micro writes nothing). */
static inline bool lp_signal_fifo_frame(int16_t *buffer, int32_t *available, int16_t *out, int32_t size, int32_t step)
{
  const bool complete = *available >= size;
  int32_t k;
  for (k = 0; k < size; ++k) {
    out[k] = complete ? buffer[k] : 0;
  }
  if (complete) {
    lp_signal_fifo_discard(buffer, available, step);
  }
  return complete;
}

/* SignalFramer: each of `rows` rows of frames * frame_step new samples gives `frames` frames of frame_size
   samples, frame_step apart, from the row's FIFO `state` (capacity samples per row; `counts[0]` samples in
   each, frame_size - frame_step zeros after a reset with prefill, else none). *valid is false when a frame
   was not yet complete (its output is then 0). */
static inline int32_t lp_signal_framer_s16(const int16_t *input, int16_t *state, int32_t *counts, int16_t *output,
                                           bool *valid, int32_t rows, int32_t frames, int32_t frame_size,
                                           int32_t frame_step, int32_t capacity)
{
  int32_t row, frame;
  int32_t available = counts[0];
  *valid = true;
  for (row = 0; row < rows; ++row) {
    int16_t *buffer = state + row * capacity;
    available = counts[0];
    for (frame = 0; frame < frames; ++frame) {
      int16_t *out = output + (row * frames + frame) * frame_size;
      lp_signal_fifo_write(buffer, &available, input + (row * frames + frame) * frame_step, frame_step);
      if (!lp_signal_fifo_frame(buffer, &available, out, frame_size, frame_step)) {
        *valid = false;
      }
    }
  }
  counts[0] = available;
  return 0;
}

/* SignalStacker: appends the frame of `channels` samples to the FIFO `state` (buffer_size samples;
   counts[0] samples in it, counts[1] whether a frame came since the reset), the first frame followed by
   left_context copies of itself; once buffer_size samples are there they are the output (*valid true) and
   the oldest step_size go. Else *valid is false and the output 0. */
static inline int32_t lp_signal_stacker_s16(const int16_t *input, int16_t *state, int32_t *counts, int16_t *output,
                                            bool *valid, int32_t channels, int32_t left_context,
                                            int32_t buffer_size, int32_t step_size)
{
  int32_t available = counts[0], k;
  lp_signal_fifo_write(state, &available, input, channels);
  if (counts[1] == 0) {
    for (k = 0; k < left_context; ++k) {
      lp_signal_fifo_write(state, &available, input, channels);
    }
    counts[1] = 1;
  }
  *valid = lp_signal_fifo_frame(state, &available, output, buffer_size, step_size);
  counts[0] = available;
  return 0;
}

#endif /* LP_SIGNAL_STREAM_H */
