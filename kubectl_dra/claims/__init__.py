"""Claims: who holds a claim, what it got, why it is stuck."""
