"""Torch frontend: trace an entry with torch.export (``trace``) and lower it to the IR (``lower``)."""
