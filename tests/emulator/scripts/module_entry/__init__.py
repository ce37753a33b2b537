"""A package whose training entry point runs as a module (`python -m module_entry.train`), as
torchtitan's does (`torchrun -m torchtitan.train`)."""
