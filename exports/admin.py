from django.contrib import admin

from .models import Release


@admin.register(Release)
class ReleaseAdmin(admin.ModelAdmin):
    """Read-only once frozen: the admin offers no change or delete for a frozen release (the
    model refuses them anyway)."""

    list_display = ("benchmark", "version", "status", "built_at", "frozen_at")
    list_filter = ("status",)
    readonly_fields = ("status", "built_at", "frozen_at", "frozen_by", "counts", "construction", "taxonomy", "job")

    def has_change_permission(self, request, obj=None):
        return super().has_change_permission(request, obj) and not (obj and obj.is_frozen)

    def has_delete_permission(self, request, obj=None):
        return super().has_delete_permission(request, obj) and not (obj and obj.is_frozen)
