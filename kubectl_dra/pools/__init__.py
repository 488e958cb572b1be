"""Resource pools as the scheduler sees them: which slices are current and which nodes reach them."""
