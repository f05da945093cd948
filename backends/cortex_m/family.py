"""The Cortex-M family's name: its backend's (`backends.backend.Backend.name`) and the `HelperLibrary.family` of
the helper libraries only its bundles may define."""

CORTEX_M_FAMILY = "cortex_m"
