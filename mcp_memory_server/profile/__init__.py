"""The user profile the memories synthesise: its fields and citations, staleness, the user's
manual edits, and what a model's synthesis may change."""

from .profile import Profile, ProfileItem, edit_profile, get_profile

__all__ = ["Profile", "ProfileItem", "edit_profile", "get_profile"]
