"""``jitlens lint``: recompile traps found by reading source, never importing it."""
