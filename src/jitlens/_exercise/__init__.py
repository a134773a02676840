"""The exercise (``jit_forward``), its grader (``jitlens check``) and ``jitlens demo``."""
