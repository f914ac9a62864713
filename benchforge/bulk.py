"""bulk_insert: the one way imports and ingest write many new rows at once.

Django's bulk_create builds every value through its SQL compiler (expression checks, a
placeholder and several calls per value), which cost ingest more than the hashing of small
images did. Rows written in bulk here are plain values, so this builds one multi-row INSERT
per chunk directly, preparing each value the way the field itself does (pre_save where the
field has one, then get_db_prep_save), and reads the new ids back with RETURNING. Like
bulk_create it sends no signals and does not call save().
"""

from collections.abc import Sequence

from django.db import connections, models, router


def _needs_pre_save(field: models.Field) -> bool:
    # Fields that fill or commit their value on save (auto_now, files) override pre_save.
    return type(field).pre_save is not models.Field.pre_save


def bulk_insert(objs: Sequence[models.Model], *, ids: bool = False, ignore_conflicts: bool = False) -> None:
    """INSERT unsaved instances of one model in as few statements as the database allows. With
    `ids`, each instance gets the primary key the database gave it (and counts as saved); without,
    the instances are left as they were (cheaper: nothing is read back). `ignore_conflicts` skips
    rows a unique constraint refuses (then no ids: some rows may not exist)."""
    if not objs:
        return
    if ids and ignore_conflicts:
        raise ValueError("bulk_insert cannot give ids to rows it may skip (ignore_conflicts).")
    model = type(objs[0])
    meta = model._meta
    if any(type(obj) is not model for obj in objs):
        raise TypeError("bulk_insert takes instances of one model.")
    using = router.db_for_write(model)
    connection = connections[using]
    pk = meta.pk
    auto_pk = all(obj.pk is None for obj in objs)
    fields = [f for f in meta.concrete_fields if not (auto_pk and f is pk)]
    if ids and auto_pk and not connection.features.can_return_rows_from_bulk_insert:
        model._base_manager.using(using).bulk_create(objs)  # an old SQLite: Django's way round it
        return
    prepare = [(f, _needs_pre_save(f)) for f in fields]
    quote = connection.ops.quote_name
    head = f"INSERT INTO {quote(meta.db_table)} ({', '.join(quote(f.column) for f in fields)}) VALUES "
    row = "(" + ", ".join(["%s"] * len(fields)) + ")"
    returning = f" RETURNING {quote(pk.column)}" if ids and auto_pk else ""
    tail = " ON CONFLICT DO NOTHING" if ignore_conflicts else returning
    per_statement = max(1, min(connection.ops.bulk_batch_size(fields, objs), 65535 // len(fields)))
    with connection.cursor() as cursor:
        for start in range(0, len(objs), per_statement):
            chunk = objs[start : start + per_statement]
            params = [
                field.get_db_prep_save(field.pre_save(obj, True) if pre else getattr(obj, field.attname), connection)
                for obj in chunk
                for field, pre in prepare
            ]
            cursor.execute(head + ", ".join([row] * len(chunk)) + tail, params)
            if returning:
                # Ids are drawn in the order the rows are inserted, while RETURNING's own order is
                # not promised (SQLite says so): sorted, they pair with the rows in order.
                for obj, value in zip(chunk, sorted(v for (v,) in cursor.fetchall()), strict=True):
                    setattr(obj, pk.attname, value)
            if ids:
                for obj in chunk:
                    obj._state.adding, obj._state.db = False, using
