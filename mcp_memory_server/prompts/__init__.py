"""Prompt texts and their builders, in our own words. Plain strings in, plain strings out."""

from .catalog import detect_memory_changes, evaluate_memory, respond_with_memory, synthesize_profile
from .extraction import INSTRUCTIONS, calibration, extract_memories

__all__ = [
    "INSTRUCTIONS",
    "calibration",
    "detect_memory_changes",
    "evaluate_memory",
    "extract_memories",
    "respond_with_memory",
    "synthesize_profile",
]
