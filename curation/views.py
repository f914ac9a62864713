from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from benchforge.roles import ANNOTATOR, RESEARCHER, role_required

from . import services
from .forms import BenchmarkCreateForm, BenchmarkSettingsForm, PresetForm, TaskForm
from .selectors import get_benchmark_for, taxonomy_tree
from .tasks import load_preset_task


@role_required(ANNOTATOR)
def taxonomy(request, slug):
    benchmark = get_benchmark_for(request.user, slug)
    return render(request, "curation/taxonomy.html", {
        "benchmark": benchmark, "tree": taxonomy_tree(benchmark), "preset_form": PresetForm(),
    })


@role_required(RESEARCHER)
def task_edit(request, slug, task_slug):
    benchmark = get_benchmark_for(request.user, slug)
    task = get_object_or_404(benchmark.tasks, slug=task_slug)
    form = TaskForm(request.POST or None, instance=task)
    if request.method == "POST" and form.is_valid():
        services.update_task(task, **{f: form.cleaned_data[f] for f in form.Meta.fields})
        messages.success(request, f"Saved task '{task.name}'.")
        return redirect("taxonomy", slug=benchmark.slug)
    return render(request, "curation/task_form.html", {"benchmark": benchmark, "task": task, "form": form})


@role_required(RESEARCHER)
def benchmark_create(request):
    form = BenchmarkCreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        benchmark = services.create_benchmark(name=data["name"], slug=data["slug"], description=data["description"], user=request.user)
        if data["preset"]:
            load_preset_task.delay(data["preset"], benchmark.pk, request.user.pk)
            messages.success(request, f"Created '{benchmark.name}'; its {data['preset']} taxonomy is loading.")
        else:
            messages.success(request, f"Created '{benchmark.name}'.")
        return redirect("dashboard", slug=benchmark.slug)
    return render(request, "curation/benchmark_form.html", {"form": form})


@role_required(RESEARCHER)
@require_POST
def preset_load(request, slug):
    benchmark = get_benchmark_for(request.user, slug)
    form = PresetForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose one of the listed presets.")
    else:
        load_preset_task.delay(form.cleaned_data["preset"], benchmark.pk, request.user.pk)
        messages.success(request, "Preset tasks added (existing tasks were kept as they were).")
    return redirect("taxonomy", slug=benchmark.slug)


@role_required(RESEARCHER)
def benchmark_settings(request, slug):
    benchmark = get_benchmark_for(request.user, slug)
    form = BenchmarkSettingsForm(request.POST or None, instance=benchmark)
    if request.method == "POST" and form.is_valid():
        form.save()
        messages.success(request, "Settings saved.")
        return redirect("dashboard", slug=benchmark.slug)
    return render(request, "curation/benchmark_settings.html", {"benchmark": benchmark, "form": form})
