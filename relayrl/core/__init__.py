"""Specs, errors, seeding and device helpers shared by every layer."""
