"""Bundle writing and building: plan + memory plan + kernel C + weights -> files (no TVM import)."""

from packager.bundle import BundleInputs, BuildConfig, TestVectors, write_bundle
from packager.selftest import TestCase
from packager.finish import BundleFacts, finish_bundle

__all__ = ["BundleFacts", "BundleInputs", "BuildConfig", "TestCase", "TestVectors", "finish_bundle", "write_bundle"]
