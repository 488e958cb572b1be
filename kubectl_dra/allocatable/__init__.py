"""KEP-5517 math: device mappings -> per-claim amounts -> pod/container DRA totals."""
