from rest_framework import serializers

from .models import Benchmark, Category, Task
from .presets import PRESETS


class TaskSerializer(serializers.ModelSerializer):
    category = serializers.CharField(source="category.name", read_only=True)

    class Meta:
        model = Task
        fields = ["id", "slug", "name", "category", "description", "collection_keywords", "guideline", "judge_rules", "quota"]
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
        fields = ["id", "slug", "name", "description", "preset", "loaded_preset", "is_external",
                  "near_dup_threshold", "min_short_edge", "categories", "tasks"]
        read_only_fields = ["id", "is_external"]
        extra_kwargs = {"slug": {"required": False, "validators": []}}
