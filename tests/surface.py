"""What the server offers, named once for the tests that check the whole surface."""

TOOLS = frozenset(
    {
        "remember",
        "recall",
        "forget",
        "list",
        "apply_changes",
        "update_session",
        "extract",
        "cleanup",
        "restore",
        "refresh_profile",
        "edit_profile",
        "import_memories",
    }
)
PROMPTS = frozenset(
    {"extract_memories", "detect_memory_changes", "evaluate_memory", "respond_with_memory", "synthesize_profile"}
)
