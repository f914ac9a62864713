"""bulk_insert: the one way imports and ingest write many new rows at once.

Django's bulk_create builds every value through its SQL compiler (expression checks, a
placeholder and several calls per value), which cost ingest more than the hashing of small
images did. Rows written in bulk here are plain values, so this builds one multi-row INSERT
per chunk directly, preparing each value the way the field itself does (pre_save where the
field has one, then get_db_prep_save; a plain str, int or bool of a plain field as it is), and
reads the new ids back with RETURNING. Like bulk_create it sends no signals and does not call
save(). insert_rows writes plain rows (tuples of values) through the same statements, for callers
that need no model instances (building one cost an import more than inserting its row).
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


def _repeating(field: models.Field, connection):
    """value -> field.get_db_prep_save(value), converting a value that is the very object of the
    row before only once (rows stored together often share one time: converting a datetime is
    dear)."""
    last: list = [object(), None]  # [value, database value]

    def convert(value):
        if value is not last[0]:
            last[0], last[1] = value, field.get_db_prep_save(value, connection)
        return last[1]

    return convert


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
    if isinstance(field, models.FileField):
        # A name (str) set on the row is stored as it is: pre_save has no file to commit then.
        def named(obj):
            value = obj.__dict__.get(attname)
            if type(value) is str:
                return value
            return field.get_db_prep_save(field.pre_save(obj, True), connection)

        return named
    if _needs_pre_save(field):
        return lambda obj: field.get_db_prep_save(field.pre_save(obj, True), connection)
    if kind is None:  # JSON, dates, decimals...: None or not, the field decides
        convert = _repeating(field, connection)
        return lambda obj: convert(getattr(obj, attname))

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
    new_ids = _write(
        model,
        fields,
        len(objs),
        ([value(obj) for value in prepare] for obj in objs),
        using=using,
        ids=ids and auto_pk,
        ignore_conflicts=ignore_conflicts,
    )
    for obj, value in zip(objs, new_ids or (), strict=bool(new_ids)):
        setattr(obj, pk.attname, value)
    if ids:
        for obj in objs:
            obj._state.adding, obj._state.db = False, using


def insert_rows(
    model: type[models.Model],
    names: Sequence[str],
    rows: Sequence[Sequence],
    *,
    ids: bool = False,
    ignore_conflicts: bool = False,
) -> list[int]:
    """INSERT plain rows of `model`, no instances made: `names` are the attnames each row gives
    values for, in order (a foreign key by its id: "item_id"); every other concrete field but an
    automatic primary key takes its default, as a new instance would (auto_now and auto_now_add:
    one time for the rows stored together, as bulk_insert stamps them). Values are prepared as
    bulk_insert prepares them. Returns the new ids in row order with `ids`, else []."""
    if not rows:
        return []
    if ids and ignore_conflicts:
        raise ValueError("insert_rows cannot give ids to rows it may skip (ignore_conflicts).")
    meta = model._meta
    using = router.db_for_write(model)
    connection = connections[using]
    given = {name: n for n, name in enumerate(names)}
    by_attname = {f.attname: f for f in meta.concrete_fields}
    unknown = set(names) - set(by_attname)
    if unknown or len(given) != len(names):
        raise ValueError(f"insert_rows: {', '.join(sorted(unknown)) or 'a repeated name'} is not one column of {meta.label}.")
    pk = meta.pk
    fields = [f for f in meta.concrete_fields if f.attname in given or f is not pk]
    if ids and pk.attname not in given and not connection.features.can_return_rows_from_bulk_insert:
        objs = [model(**dict(zip(names, row))) for row in rows]  # an old SQLite: bulk_insert's way round it
        bulk_insert(objs, ids=True)
        return [obj.pk for obj in objs]
    # Per field, one of: (its position in the row, the type stored as it is, a converter);
    # (None, the field, a converter): a callable default, called per row; (None, None, the
    # database value of every row).
    steps: list[tuple] = []
    blank = None
    for field in fields:
        if field.attname in given:
            kind = _as_is_type(field) or (str if isinstance(field, models.FileField) else None)
            steps.append((given[field.attname], kind, _repeating(field, connection)))
        elif isinstance(field, models.DateField) and (field.auto_now or field.auto_now_add):
            blank = blank or model()
            steps.append((None, None, field.get_db_prep_save(field.pre_save(blank, True), connection)))
        elif field.has_default() and callable(field.default):
            steps.append((None, field, _repeating(field, connection)))
        else:
            steps.append((None, None, field.get_db_prep_save(field.get_default(), connection)))

    def prepared(row):
        values = []
        for position, kind, convert in steps:
            if position is None:
                values.append(convert(kind.get_default()) if kind is not None else convert)
                continue
            value = row[position]
            values.append(value if value is None or type(value) is kind else convert(value))
        return values

    new_ids = _write(
        model,
        fields,
        len(rows),
        (prepared(row) for row in rows),
        using=using,
        ids=ids and pk.attname not in given,
        ignore_conflicts=ignore_conflicts,
    )
    return new_ids or ([row[given[pk.attname]] for row in rows] if ids else [])


def _write(model, fields, count: int, params, *, using: str, ids: bool, ignore_conflicts: bool) -> list[int] | None:
    """The one multi-row INSERT: `params` yields each row's database values (for `fields`, in
    order), `count` of them. With `ids`, returns the new primary keys in row order."""
    connection = connections[using]
    meta = model._meta
    quote = connection.ops.quote_name
    head = f"INSERT INTO {quote(meta.db_table)} ({', '.join(quote(f.column) for f in fields)}) VALUES "
    row = "(" + ", ".join(["%s"] * len(fields)) + ")"
    returning = f" RETURNING {quote(meta.pk.column)}" if ids else ""
    tail = " ON CONFLICT DO NOTHING" if ignore_conflicts else returning
    per_statement = max(1, min(connection.ops.bulk_batch_size(fields, range(count)), 65535 // len(fields)))
    new_ids: list[int] = []
    params = iter(params)
    with connection.cursor() as cursor:
        for start in range(0, count, per_statement):
            size = min(per_statement, count - start)
            values = [value for _ in range(size) for value in next(params)]
            cursor.execute(head + ", ".join([row] * size) + tail, values)
            if returning:
                # Ids are drawn in the order the rows are inserted, while RETURNING's own order is
                # not promised (SQLite says so): sorted, they pair with the rows in order.
                new_ids += sorted(v for (v,) in cursor.fetchall())
    return new_ids if ids else None


def update_rows(model: type[models.Model], names: Sequence[str], rows: Sequence[Sequence]) -> None:
    """UPDATE existing rows of `model`: each row is (primary key, *values for `names`), attnames as
    insert_rows takes them. One statement run for every row (executemany), values prepared as
    insert_rows prepares them: what bulk_update does with a CASE per column, without building an
    expression per value (which cost an import more than the update). Sends no signals; like
    insert_rows, not for the models of a frozen release, whose querysets guard them."""
    if not rows:
        return
    meta = model._meta
    using = router.db_for_write(model)
    connection = connections[using]
    by_attname = {f.attname: f for f in meta.concrete_fields}
    unknown = set(names) - set(by_attname)
    if unknown or len(set(names)) != len(names) or meta.pk.attname in names:
        raise ValueError(f"update_rows: {', '.join(sorted(unknown)) or 'a repeated name or the key'} is not one column to set.")
    fields = [by_attname[name] for name in names] + [meta.pk]
    steps = [(_as_is_type(field), _repeating(field, connection)) for field in fields]
    quote = connection.ops.quote_name
    assignments = ", ".join(f"{quote(field.column)} = %s" for field in fields[:-1])
    sql = f"UPDATE {quote(meta.db_table)} SET {assignments} WHERE {quote(meta.pk.column)} = %s"
    params = [
        [value if value is None or type(value) is kind else convert(value) for value, (kind, convert) in zip(row, steps)]
        for row in ((*row[1:], row[0]) for row in rows)
    ]
    with connection.cursor() as cursor:
        cursor.executemany(sql, params)


def unsaved(model: type[models.Model]):
    """A maker of new, unsaved instances of `model`: make(**values) returns what model(**values)
    does (defaults filled, a related object given by name cached on the instance), built from
    positional values, without __init__'s per-field keyword handling and related-object setters
    (an import made tens of thousands and that cost more than inserting their rows)."""
    fields = model._meta.concrete_fields
    position = {f.attname: n for n, f in enumerate(fields)}
    related = {f.name: f for f in fields if f.is_relation}
    template = [None if f.has_default() and callable(f.default) else f.get_default() for f in fields]
    per_instance = [(n, f) for n, f in enumerate(fields) if f.has_default() and callable(f.default)]

    def make(**values) -> models.Model:
        args = template.copy()
        for n, field in per_instance:
            args[n] = field.get_default()
        cached = []
        for name, value in values.items():
            field = related.get(name)
            if field is not None:
                args[position[field.attname]] = None if value is None else getattr(value, field.target_field.attname)
                cached.append((field, value))
            else:
                args[position[name]] = value  # a KeyError names a field the model does not have
        obj = model(*args)
        for field, value in cached:
            field.set_cached_value(obj, value)
        return obj

    return make
