"""API shapes for items, assignments and history. Types only: the rules are in services."""

from rest_framework import serializers

from benchforge.inputs import id_field

from .contract import ROLES_IN_TURN, item_payload
from .models import Assignment, Criterion, Item, ItemRevision
from .workflow import STATUS_CHOICES


def _text(**kwargs):
    # Keep what people typed, spaces and line breaks included.
    return serializers.CharField(allow_blank=True, trim_whitespace=False, **kwargs)


class CriterionSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=Criterion.Kind.choices)
    text = _text()


class TurnSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=[(r, r) for r in ROLES_IN_TURN])
    content = _text()


class ImageRefSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    sha256 = serializers.CharField()
    url = serializers.CharField()
    width = serializers.IntegerField()
    height = serializers.IntegerField()


class ItemSerializer(serializers.Serializer):
    """An item as `annotation.selectors.item_payload` gives it (rewrites show their seed's
    images, reference answer and criteria)."""

    id = serializers.IntegerField()
    benchmark = serializers.CharField(help_text="benchmark slug")
    task = serializers.CharField(help_text="task slug")
    category = serializers.CharField(help_text="category path, e.g. 'Perception / Coarse Perception'")
    kind = serializers.ChoiceField(choices=Item.Kind.choices)
    question_type = serializers.ChoiceField(choices=Item.QuestionType.choices)
    question = serializers.CharField()
    history = TurnSerializer(many=True)
    incoherent = serializers.BooleanField()
    hint = serializers.CharField()
    choices = serializers.ListField(child=serializers.CharField())
    answer = serializers.CharField()
    reference_answer = serializers.CharField()
    criteria = CriterionSerializer(many=True)
    description = serializers.CharField()
    images = ImageRefSerializer(many=True)
    seed_id = serializers.IntegerField(allow_null=True)
    external_id = serializers.CharField()
    is_external = serializers.BooleanField()
    status = serializers.ChoiceField(choices=STATUS_CHOICES)
    version = serializers.IntegerField(help_text="send it back with every change (optimistic locking)")
    author = serializers.CharField(allow_null=True)
    assignee = serializers.CharField(allow_null=True)
    updated_at = serializers.DateTimeField()
    submitted_at = serializers.DateTimeField(allow_null=True)
    withheld = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="fields a frozen release keeps private and left out here (answer, reference_answer, criteria): "
        "shown only to the people whose work the item is, and to researchers",
    )

    def to_representation(self, instance):
        return item_payload(instance)


class ItemWriteSerializer(serializers.Serializer):
    """Fields an author sets. On PATCH send only what changes, plus the `version` you loaded."""

    task = serializers.SlugField(required=False, help_text="task slug (required on create)")
    kind = serializers.ChoiceField(choices=Item.Kind.choices, required=False)
    question_type = serializers.ChoiceField(choices=Item.QuestionType.choices, required=False)
    question = _text(required=False)
    history = TurnSerializer(many=True, required=False, help_text="multi_turn only: user/assistant turns before the question")
    incoherent = serializers.BooleanField(required=False)
    hint = _text(required=False)
    choices = serializers.ListField(child=_text(), required=False, help_text="mcq only: 2-4 options, index 0 is A")
    answer = serializers.CharField(allow_blank=True, max_length=1, required=False, help_text="letter of the correct option")
    reference_answer = _text(required=False)
    description = _text(required=False)
    images = serializers.ListField(child=id_field(), required=False, max_length=100, help_text="accepted image ids, in order")
    criteria = CriterionSerializer(many=True, required=False, help_text="1-3 criteria (required before submitting)")


class ItemUpdateSerializer(ItemWriteSerializer):
    version = id_field(help_text="the version your edit started from; a newer stored version answers 409")


class SubmitSerializer(serializers.Serializer):
    version = id_field(required=False, help_text="the version you reviewed before submitting (recommended)")


class ProblemSerializer(serializers.Serializer):
    detail = serializers.CharField()
    code = serializers.CharField()
    problems = serializers.ListField(child=serializers.CharField(), required=False)


class StaleSerializer(serializers.Serializer):
    detail = serializers.CharField()
    code = serializers.CharField()
    current_version = serializers.IntegerField()
    current = ItemSerializer()
    changed_by = serializers.CharField()
    changed_at = serializers.DateTimeField(allow_null=True)


class AssignmentSerializer(serializers.ModelSerializer):
    benchmark = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    task = serializers.SlugRelatedField(slug_field="slug", read_only=True)

    class Meta:
        model = Assignment
        fields = ["id", "benchmark", "task", "image", "item", "status", "created_at", "done_at"]
        read_only_fields = fields


class RevisionSerializer(serializers.ModelSerializer):
    changed_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = ItemRevision
        fields = ["version", "action", "note", "changed_by", "changed_at", "snapshot"]
        read_only_fields = fields
