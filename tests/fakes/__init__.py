"""Test doubles for external services (a loopback OpenAI-compatible LLM server)."""
