"""The commands that are not one mode's: the store's commands and the pieces all commands share."""
