"""Link stage: from generated C to a static binary, its size report and its image."""
