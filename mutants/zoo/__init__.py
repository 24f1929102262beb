"""One SGLang-compatible SUT module per mutant: a base_* module with exactly one fault."""
