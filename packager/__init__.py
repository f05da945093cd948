"""Bundle writing and building: plan + memory plan + kernel C + weights -> files (no TVM import)."""

from packager.bundle import BundleInputs, BuildConfig, TestVectors, write_bundle, write_manifest

__all__ = ["BundleInputs", "BuildConfig", "TestVectors", "write_bundle", "write_manifest"]
