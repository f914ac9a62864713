"""bulk_insert: the one way imports and ingest write many new rows at once.

Django's bulk_create builds every value through its SQL compiler (expression checks, a
placeholder and several calls per value), which cost ingest more than the hashing of small
images did. Rows written in bulk here are plain values, so this builds one multi-row INSERT
per chunk directly, preparing each value the way the field itself does (pre_save where the
field has one, then get_db_prep_save; a plain str, int or bool of a plain field as it is), and
reads the new ids back with RETURNING. Like bulk_create it sends no signals and does not call
save().
"""

from collections.abc import Sequence

from django.db import connections, models, router


def _needs_pre_save(field: models.Field) -> bool:
    # Fields that fill or commit their value on save (auto_now, files) override pre_save.
    return type(field).pre_save is not models.Field.pre_save


# Fields (these classes exactly, not subclasses) whose database value is the Python value itself
# when it already has this type: most values of a row, and the bulk of get_db_prep_save's cost.
_AS_IS = {
    models.CharField: str,
    models.TextField: str,
    models.SlugField: str,
    models.URLField: str,
    models.BooleanField: bool,
    models.IntegerField: int,
    models.SmallIntegerField: int,
    models.BigIntegerField: int,
    models.PositiveIntegerField: int,
    models.PositiveSmallIntegerField: int,
    models.PositiveBigIntegerField: int,
    models.FloatField: float,
}
_INTEGER_KEYS = (models.AutoField, models.BigAutoField, models.SmallAutoField, models.IntegerField, models.BigIntegerField)


def _as_is_type(field: models.Field) -> type | None:
    if isinstance(field, models.ForeignKey) and type(field.target_field) in _INTEGER_KEYS:
        return int
    return _AS_IS.get(type(field))


def _preparer(field: models.Field, connection):
    """value(obj) -> the database value of `field`, as the field's own save would make it."""
    attname, kind = field.attname, _as_is_type(field)
    if isinstance(field, models.DateField) and (field.auto_now or field.auto_now_add):
        # Rows inserted together are stamped with one time (the field's pre_save, once), and
        # converted once: per row, the date conversion was the dearest value of a row.
        stamp: list = []  # [value, database value], from the first row

        def stamped(obj):
            if stamp:
                setattr(obj, attname, stamp[0])
            else:
                value = field.pre_save(obj, True)  # sets it on the row too
                stamp.extend((value, field.get_db_prep_save(value, connection)))
            return stamp[1]

        return stamped
    if _needs_pre_save(field):
        return lambda obj: field.get_db_prep_save(field.pre_save(obj, True), connection)
    if kind is None:  # JSON, dates, decimals...: None or not, the field decides
        return lambda obj: field.get_db_prep_save(getattr(obj, attname), connection)

    def prepare(obj):
        value = obj.__dict__[attname] if attname in obj.__dict__ else getattr(obj, attname)
        if value is None or type(value) is kind:
            return value
        return field.get_db_prep_save(value, connection)

    return prepare


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
    prepare = [_preparer(f, connection) for f in fields]
    quote = connection.ops.quote_name
    head = f"INSERT INTO {quote(meta.db_table)} ({', '.join(quote(f.column) for f in fields)}) VALUES "
    row = "(" + ", ".join(["%s"] * len(fields)) + ")"
    returning = f" RETURNING {quote(pk.column)}" if ids and auto_pk else ""
    tail = " ON CONFLICT DO NOTHING" if ignore_conflicts else returning
    per_statement = max(1, min(connection.ops.bulk_batch_size(fields, objs), 65535 // len(fields)))
    with connection.cursor() as cursor:
        for start in range(0, len(objs), per_statement):
            chunk = objs[start : start + per_statement]
            params = [value(obj) for obj in chunk for value in prepare]
            cursor.execute(head + ", ".join([row] * len(chunk)) + tail, params)
            if returning:
                # Ids are drawn in the order the rows are inserted, while RETURNING's own order is
                # not promised (SQLite says so): sorted, they pair with the rows in order.
                for obj, value in zip(chunk, sorted(v for (v,) in cursor.fetchall()), strict=True):
                    setattr(obj, pk.attname, value)
            if ids:
                for obj in chunk:
                    obj._state.adding, obj._state.db = False, using
