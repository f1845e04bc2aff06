"""The errors a job raises for its user, torch-free so that every layer and the CLI can name them."""


class JobError(Exception):
    """A job that cannot run, or failed, for a reason the user can act on; the message says where."""


class Interrupted(Exception):
    """Ctrl-C during training, after the checkpoint was saved; the message says how to continue."""
