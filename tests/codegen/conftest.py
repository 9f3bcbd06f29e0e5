import pytest


@pytest.fixture(autouse=True)
def _private_cache_dir(tmp_path, monkeypatch):
    """No codegen test reads or writes the user's ~/.cache/backplan."""
    monkeypatch.setenv("BACKPLAN_CACHE_DIR", str(tmp_path / "backplan-cache"))
