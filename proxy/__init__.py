"""The shadow proxy and the core it shares with replay (see ../shared/DESIGN.md, "Parts")."""
