"""The test databases of a parallel run on Postgres: migrated once, copied for each process.

Every pytest-xdist process used to migrate its own database (about 80 migrations: 7 s alone, 22-30 s
when three processes migrate at the same moment on two cores). Here the first process to take a
lock migrates a template database; each process, that one included, then gets its database as a
copy of it (`CREATE DATABASE ... TEMPLATE`, under a second). A process that replaces a crashed one
copies the same template. The run's controller drops the template at the end (`drop_template`).
"""

import fcntl
from pathlib import Path


def template_name(test_name: str) -> str:
    """`test_x` (the test database's name without a process's `_gwN`) -> `test_x_template`."""
    return f"{test_name}_template"


def create_from_template(connection, worker: str, run_folder: Path, verbosity: int) -> list:
    """This process's test database, copied from the run's template (made here if no process has
    made it yet); the old-config list `django.test.utils.teardown_databases` takes. `run_folder` is
    the one folder every process of the run shares (their temporary folders' parent)."""
    creation = connection.creation
    test_name = creation._get_test_db_name()
    template = template_name(test_name.removesuffix(f"_{worker}"))
    old_name = connection.settings_dict["NAME"]
    quote = connection.ops.quote_name
    # The lock file records that this run made its template: a second run (a new folder) makes it afresh.
    with open(run_folder / "test-database-template.lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        lock.seek(0)
        if lock.read() != template:
            connection.settings_dict["TEST"]["NAME"] = template
            try:
                creation.create_test_db(verbosity=verbosity, autoclobber=True, serialize=False)
            finally:
                connection.settings_dict["TEST"]["NAME"] = test_name
            # Postgres copies a template only while nobody is connected to it.
            connection.close()
            lock.write(template)
            lock.flush()
        with creation._nodb_cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS {quote(test_name)}")
            cursor.execute(f"CREATE DATABASE {quote(test_name)} WITH TEMPLATE {quote(template)}")
    from django.conf import settings

    settings.DATABASES[connection.alias]["NAME"] = test_name
    connection.settings_dict["NAME"] = test_name
    connection.close()
    return [(connection, old_name, True)]


def drop_template(connection) -> None:
    """At the end of a parallel run, in the controller (whose test database name has no suffix)."""
    name = template_name(connection.creation._get_test_db_name())
    with connection.creation._nodb_cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS {connection.ops.quote_name(name)}")
