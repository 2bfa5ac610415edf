
pytest.importorskip("transformers", reason="needs the hf extra: pip install -e '.[hf]'")
