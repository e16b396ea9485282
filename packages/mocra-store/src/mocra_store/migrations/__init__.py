"""Alembic migrations shipped in the package (script directory ``mocra_store:migrations``).

Run them with ``mocra_store.migrate`` or ``python -m mocra_store upgrade URL``.
"""
