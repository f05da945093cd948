"""Our Relax passes, each an ordinary `tvm.transform` pass that users can put into their own pipelines."""

from tvm_ext.transform.fuse_keeping_layers import FuseOpsKeepingLayers

__all__ = ["FuseOpsKeepingLayers"]
