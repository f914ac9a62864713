from rest_framework import serializers

from benchforge.inputs import id_field

from .imaging import hash_to_hex
from .models import Benchmark, Category, Image, KnownImageSet, Task
from .presets import PRESETS


class TaskSerializer(serializers.ModelSerializer):
    category = serializers.CharField(source="category.name", read_only=True)

    class Meta:
        model = Task
        fields = [
            *("id", "slug", "name", "name_en", "category", "description", "description_en", "collection_keywords"),
            *("guideline", "guideline_en", "judge_rules", "judge_rules_en", "quota"),
        ]
        read_only_fields = ["id", "slug", "category"]

    def validate_collection_keywords(self, value):
        if not isinstance(value, list) or not all(isinstance(k, str) for k in value):
            raise serializers.ValidationError("collection_keywords must be a list of strings.")
        return value


class CategorySerializer(serializers.ModelSerializer):
    parent = serializers.CharField(source="parent.name", default=None, read_only=True)

    class Meta:
        model = Category
        fields = ["id", "name", "parent", "description"]


class BenchmarkSerializer(serializers.ModelSerializer):
    preset = serializers.ChoiceField(choices=sorted(PRESETS), required=False, allow_blank=True, write_only=True)
    loaded_preset = serializers.CharField(source="preset", read_only=True)
    categories = CategorySerializer(many=True, read_only=True)
    tasks = TaskSerializer(many=True, read_only=True)

    class Meta:
        model = Benchmark
        fields = [
            "id",
            "slug",
            "name",
            "description",
            "language",
            "preset",
            "loaded_preset",
            "is_external",
            "near_dup_threshold",
            "min_short_edge",
            "categories",
            "tasks",
        ]
        read_only_fields = ["id", "is_external"]
        extra_kwargs = {"slug": {"required": False, "validators": []}}


class ImageSerializer(serializers.ModelSerializer):
    tasks = serializers.SlugRelatedField(slug_field="slug", many=True, read_only=True)
    phash = serializers.SerializerMethodField(help_text="16 hex digits, as imagehash prints it")
    dhash = serializers.SerializerMethodField()
    file_url = serializers.SerializerMethodField()
    thumbnail_url = serializers.SerializerMethodField()
    collected_by = serializers.CharField(source="collected_by.username", default=None, read_only=True)
    contaminated_by = serializers.SerializerMethodField()

    class Meta:
        model = Image
        fields = [
            "id",
            "original_name",
            "sha256",
            "md5",
            "phash",
            "dhash",
            "width",
            "height",
            "format",
            "file_size",
            "animated",
            "source",
            "license",
            "collected_by",
            "collected_at",
            "tasks",
            "status",
            "reject_reason",
            "reject_note",
            "low_resolution",
            "near_duplicate_of",
            "near_duplicate_distance",
            "near_duplicate_resolved",
            "contaminated",
            "contaminated_by",
            "file_url",
            "thumbnail_url",
        ]
        read_only_fields = fields

    def get_phash(self, obj) -> str:
        return hash_to_hex(obj.phash)

    def get_dhash(self, obj) -> str:
        return hash_to_hex(obj.dhash)

    def get_file_url(self, obj) -> str:
        return obj.file.url

    def get_thumbnail_url(self, obj) -> str:
        return obj.thumbnail.url if obj.thumbnail else ""

    def get_contaminated_by(self, obj) -> list[str]:
        if not obj.contaminated:
            return []
        # .all(): lists prefetch the matches with their sets (see ImageListUpload.get_queryset).
        return [m.known_set.name for m in obj.contamination_matches.all()]


class ScreenSerializer(serializers.Serializer):
    ids = serializers.ListField(child=id_field(), allow_empty=False, max_length=1000)
    action = serializers.ChoiceField(choices=["accept", "reject", "reset"])
    reason = serializers.CharField(required=False, allow_blank=True, default="")
    note = serializers.CharField(required=False, allow_blank=True, default="")


class ImageUploadSerializer(serializers.Serializer):
    # Empty files pass here so that the ingest reports them per file, like any other bad file.
    files = serializers.ListField(child=serializers.FileField(allow_empty_file=True), allow_empty=False, max_length=200)
    tasks = serializers.ListField(child=serializers.SlugField(), required=False, default=list)
    source = serializers.CharField(required=False, allow_blank=True, default="", max_length=1000)
    license = serializers.CharField(required=False, allow_blank=True, default="", max_length=200)


class ImportSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["zip", "url_list"])
    file = serializers.FileField()
    tasks = serializers.ListField(child=serializers.SlugField(), required=False, default=list)
    source = serializers.CharField(required=False, allow_blank=True, default="", max_length=1000)
    license = serializers.CharField(required=False, allow_blank=True, default="", max_length=200)


class KnownSetSerializer(serializers.ModelSerializer):
    hashes = serializers.IntegerField(source="n_hashes", read_only=True)
    images_matched = serializers.IntegerField(source="n_matches", read_only=True)
    created_by = serializers.CharField(source="created_by.username", default=None, read_only=True)

    class Meta:
        model = KnownImageSet
        fields = ["id", "name", "kind", "description", "hashes", "images_matched", "created_by", "created_at"]
        read_only_fields = fields


class KnownSetImportSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    kind = serializers.ChoiceField(choices=KnownImageSet.Kind.values, default=KnownImageSet.Kind.OTHER)
    description = serializers.CharField(required=False, allow_blank=True, default="")
    file = serializers.FileField(help_text="CSV with md5 and/or phash columns, or JSONL")
