"""The review UI (see ``app``) and who may use it (see ``auth``)."""
