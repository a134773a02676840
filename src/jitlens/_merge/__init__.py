"""``jitlens merge``: one view of a multi-process job's per-process reports."""
