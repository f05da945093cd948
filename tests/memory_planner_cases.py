"""Hand-made inputs for the memory planner's tests: literal buffer sets and small execution plans."""

from __future__ import annotations

from memory_planner.api import Buffer
from memory_planner.plan import ExecutionPlan, InplaceOutput, KernelAccess, KernelCall, Tensor, TensorRole

KB = 1024

# MLPerf Tiny's ResNet-8 (shared model pretrainedResnet, float32) in TFLite's operator order: 32x32x16,
# 16x16x32 and 8x8x64 activations; buffers named after the layer writing them. Step 2 holds the block
# input, conv1a and conv1b outputs: 3 x 64 KB, the lower bound.
RESNET8_BUFFERS = [
    Buffer("conv0", 64 * KB, 0, 3, label="conv0"),
    Buffer("conv1a", 64 * KB, 1, 2, label="conv1a"),
    Buffer("conv1b", 64 * KB, 2, 3, label="conv1b"),
    Buffer("add1", 64 * KB, 3, 6, label="add1"),
    Buffer("conv2a", 32 * KB, 4, 5, label="conv2a"),
    Buffer("conv2b", 32 * KB, 5, 7, label="conv2b"),
    Buffer("conv2skip", 32 * KB, 6, 7, label="conv2skip"),
    Buffer("add2", 32 * KB, 7, 10, label="add2"),
    Buffer("conv3a", 16 * KB, 8, 9, label="conv3a"),
    Buffer("conv3b", 16 * KB, 9, 11, label="conv3b"),
    Buffer("conv3skip", 16 * KB, 10, 11, label="conv3skip"),
    Buffer("add3", 16 * KB, 11, 12, label="add3"),
    Buffer("avgpool", 256, 12, 13, label="avgpool"),
    Buffer("fc", 40, 13, 14, label="fc"),
]
RESNET8_LOWER_BOUND = 3 * 64 * KB

# MLPerf Tiny's anomaly-detection autoencoder (shared model ad01_fp32): ten fully-connected layers
# 640-128-128-128-128-8-128-128-128-128-640 in float32; the model's input and output are the caller's.
# Largest first, greedy puts fc4 and fc6 (both live with the 32-byte bottleneck, not with each other)
# at 0 and 512, so the bottleneck goes to 1024: 1056 bytes, 32 over the bound of two 512-byte layers.
AD01_BUFFERS = [
    Buffer(f"fc{i}", 32 if i == 5 else 512, i - 1, i, label=f"fc{i}") for i in range(1, 10)
]
AD01_LOWER_BOUND = 1024
AD01_GREEDY_ARENA = 1056

# Both greedy strategies miss the optimum here (found by random search, confirmed by brute force): largest
# first puts the 64-byte and 48-byte buffers both at 0, which pushes the long-lived 32-byte buffer to 48
# and leaves the 16-byte ones no gap below 80, so the arena is 112 bytes; 96 (the lower bound) fits.
GREEDY_TRAP = [
    Buffer("b0", 64, 1, 1),
    Buffer("b1", 16, 0, 2),
    Buffer("b2", 48, 4, 4),
    Buffer("b3", 32, 2, 5),
    Buffer("b4", 16, 1, 4),
]


def tensor(name: str, shape: tuple[int, ...], role: TensorRole = TensorRole.INTERMEDIATE, **kw) -> Tensor:
    """A float32 tensor produced by the layer of the same name."""
    return Tensor(name, shape, "float32", role, layer=name, **kw)


def make_plan(tensors: list[Tensor], calls: list[KernelCall]) -> ExecutionPlan:
    inputs = [t.name for t in tensors if t.role is TensorRole.INPUT]
    outputs = [t.name for t in tensors if t.role is TensorRole.OUTPUT]
    return ExecutionPlan("net", "net.onnx", "lowpower", {t.name: t for t in tensors}, calls, inputs, outputs)


def residual_block_plan() -> ExecutionPlan:
    """conv0 -> conv1 -> conv2 -> add(conv2, skip) with a 1x1 skip conv listed right after conv0,
    a flatten view, a padding scratch buffer in conv1, and the add allowed in place over conv2.

    Bytes: conv0/skip/conv1/conv2/add 4 KB each (1x8x8x16 float32), pad 6400 B, fc output 40 B.
    """
    r = TensorRole
    act = (1, 8, 8, 16)
    tensors = [
        tensor("x", (1, 8, 8, 4), r.INPUT),
        tensor("w", (16,), r.CONSTANT),
        tensor("conv0", act),
        tensor("skip", act),
        tensor("conv1", act),
        tensor("pad", (1, 10, 10, 16), r.SCRATCH),
        tensor("conv2", act),
        tensor("add", act),
        tensor("flat", (1024,), view_of="add"),
        tensor("fc", (10,)),
        tensor("y", (10,), r.OUTPUT),
    ]
    calls = [
        KernelCall("k_conv0", ("conv0",), ("x", "w"), ("conv0",)),
        KernelCall("k_skip", ("skip",), ("conv0", "w"), ("skip",)),
        KernelCall("k_conv1", ("conv1",), ("conv0", "w"), ("conv1",), ("pad",)),
        KernelCall("k_conv2", ("conv2",), ("conv1", "w"), ("conv2",)),
        KernelCall("k_add", ("add",), ("conv2", "skip"), ("add",), access=KernelAccess((InplaceOutput("add", "conv2"),))),
        KernelCall("k_fc", ("fc",), ("flat", "w"), ("fc",)),
        KernelCall("k_softmax", ("softmax",), ("fc",), ("y",)),
    ]
    return make_plan(tensors, calls)
