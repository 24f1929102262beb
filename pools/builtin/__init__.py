"""The builtin pools: SGLang's pool API implemented over store engines (torch, Triton), per era,
with their layouts and FP4 helpers. What the judge judges, so the judge imports nothing of this
folder (an import-linter contract in pyproject.toml forbids the folder as a whole)."""
