"""Command-line interface: `maya emulate | simulate | profile | fit | tune | report`."""
