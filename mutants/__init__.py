"""The mutation self-check: SGLang-compatible SUTs with one planted write-path fault each.

`base_*.py` are small, obviously correct pools per era written from SGLang's semantics (plain
torch indexing, nothing from pools/); `zoo/` holds one module per mutant; `catalog.py` is the data
that `kvh mutants` reads. docs/mutants.md explains the run and its figures.
"""
