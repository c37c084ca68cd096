"""Adaptive draft length: the controller (``controller``), the step-cost models it weighs drafts
against (``cost_model``) and the acceptance traces it is evaluated on (``trace``)."""
