"""packager package."""
