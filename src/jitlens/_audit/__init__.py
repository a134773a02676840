"""``jitlens audit``: build a model twice and report the statics that will miss the cache."""
