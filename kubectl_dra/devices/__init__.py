"""``kubectl dra devices``: what is free, where, and who holds the rest."""
