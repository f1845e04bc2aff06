"""nlndl: learn explicit, verifiable Datalog programs with Neural Logic Networks."""

__version__ = "0.1.0"
