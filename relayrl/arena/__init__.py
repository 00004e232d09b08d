"""The arena layer: policies by id and what drives them (paper 004, sections 3-4)."""
