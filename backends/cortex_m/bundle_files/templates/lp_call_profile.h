/* Per-call instruction counts of a bundle's PROFILING build of its run function (written for this project).
 *
 * Only cortex_m/<model>_model_profiled.c uses it: that copy of the run function reads the board's instruction
 * counter (lp_icount.h) around each kernel call and reports each count here. The shipped library's
 * <model>_model.c never includes this header. packager.cortex_m.profile reads the lines printed.
 */
#ifndef LP_CALL_PROFILE_H
#define LP_CALL_PROFILE_H

#include <stdint.h>

/* Prints "profile: empty region N": the instructions an empty start/reading pair of lp_icount.h counts. */
void lp_profile_empty_region(void);

/* Prints "profile: call STEP N": `instructions` counted around the run function's call number `step`. */
void lp_profile_call(uint32_t step, uint64_t instructions);

#endif /* LP_CALL_PROFILE_H */
