"""A library's module-level state, set once per process (Megatron keeps its parsed arguments so)."""

INITIALIZED = False


def initialize() -> None:
    global INITIALIZED
    assert not INITIALIZED, "already initialized"
    INITIALIZED = True
