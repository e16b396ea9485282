"""Alembic's entry point: runs the revisions on the connection ``mocra_store.migrate`` hands over.

``mocra_store.migrate`` opens the (async) engine and calls alembic inside ``connection.run_sync``, so this
file never builds an engine of its own. Imported outside alembic (doctest collection) it does nothing.
"""

from __future__ import annotations

from alembic import context

from mocra_store.models import Base


def run_migrations() -> None:
    """Configure the context on the handed-over connection and run the revisions in one transaction."""
    connection = context.config.attributes.get("connection")
    if connection is None:
        raise RuntimeError(
            "mocra_store migrations run through mocra_store.migrate (or python -m mocra_store)"
        )
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


try:
    context.config  # noqa: B018 - fails unless alembic is running this file
except (NameError, AttributeError):
    pass
else:
    run_migrations()
