"""Device taints (slices and DeviceTaintRules), what they do to allocated claims and pods, and device health."""
