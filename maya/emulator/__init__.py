"""Emulator: runs an unmodified CUDA training script on a machine with no GPU and records its trace.

Import `maya.emulator.session` for the machinery; this package init stays light so that
`maya.trace` can import the event enums without pulling in torch.
"""
