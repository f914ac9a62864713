"""An in-memory Label Studio for the quick variant of the sequence test: the calls push and pull
make (labelstudio.client.LabelStudioClient's methods), answering what Label Studio 1.23.2 answers
to them (checked against the real server by the real variant of the same sequences), plus what its
editor does when an annotator submits. Only for running thousands of steps in seconds; every rule
is also exercised against the real server."""

import itertools
from datetime import datetime, timezone


def _now() -> str:
    return datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")


class FakeLabelStudio:
    url = "http://labelstudio.invalid"

    def __init__(self):
        self.projects: dict[int, dict] = {}
        self.tasks: dict[int, dict] = {}
        self._ids = itertools.count(1)

    # -- the client's interface (labelstudio.client.LabelStudioClient)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def close(self):
        return None

    def check(self):
        return None

    def create_project(self, *, title, label_config, instructions=""):
        pid = next(self._ids)
        self.projects[pid] = {"id": pid, "title": title, "label_config": label_config, "tasks": []}
        return {"id": pid}

    def get_project(self, project_id):
        project = self.projects[project_id]
        return {"id": project_id, "label_config": project["label_config"], "task_number": len(project["tasks"])}

    def project_or_none(self, project_id):
        return self.get_project(project_id) if project_id in self.projects else None

    def update_project(self, project_id, **fields):
        self.projects[project_id].update(fields)
        return self.get_project(project_id)

    def delete_project(self, project_id):
        self.projects.pop(project_id, None)

    def import_tasks(self, project_id, tasks):
        ids = []
        for task in tasks:
            tid = next(self._ids)
            self.tasks[tid] = {
                "id": tid,
                "project": project_id,
                "data": task["data"],
                "meta": task["meta"],
                "predictions": [],
                "annotations": [],
            }
            for prediction in task.get("predictions", []):
                self._predict(tid, prediction["result"], prediction["model_version"])
            self.projects[project_id]["tasks"].append(tid)
            ids.append(tid)
        return ids

    def _predict(self, task_id, result, model_version):
        prediction = {
            "id": next(self._ids),
            "task": task_id,
            "result": result,
            "model_version": model_version,
            "created_at": _now(),
        }
        self.tasks[task_id]["predictions"].append(prediction)
        return prediction

    def _of(self, project_id):
        return [self.tasks[tid] for tid in self.projects[project_id]["tasks"]]

    def iter_tasks(self, project_id, include="id,meta,total_annotations"):
        for task in self._of(project_id):
            yield {"id": task["id"], "meta": task["meta"], "total_annotations": len(task["annotations"])}

    def iter_tasks_with_work(self, project_id):
        for task in self._of(project_id):
            yield {k: v for k, v in task.items() if k != "data"}

    def predictions_of(self, project_id, model_version):
        return {
            task["id"]: [p for p in task["predictions"] if p["model_version"] == model_version]
            for task in self._of(project_id)
            if any(p["model_version"] == model_version for p in task["predictions"])
        }

    def replace_prediction(self, task_id, *, old_ids, result, model_version):
        task = self.tasks[task_id]
        task["predictions"] = [p for p in task["predictions"] if p["id"] not in set(old_ids)]
        for annotation in task["annotations"]:  # Label Studio: on_delete=SET_NULL
            if annotation["parent_prediction"] in set(old_ids):
                annotation["parent_prediction"] = None
        return self._predict(task_id, result, model_version) if result else None

    def update_task(self, task_id, *, data, meta):
        self.tasks[task_id].update(data=data, meta=meta)

    # -- what the tests do in Label Studio

    def prefill(self, task_id):
        return max((p for p in self.tasks[task_id]["predictions"] if p["model_version"] == "benchforge"), key=lambda p: p["id"])

    def annotate(self, task_id, result, *, parent_prediction, lead_time, by):
        when = _now()
        annotation = {
            "id": next(self._ids),
            "task": task_id,
            "result": result,
            "created_username": f" user{by}@example.com, {by}",
            "completed_by": by,
            "was_cancelled": False,
            "created_at": when,
            "updated_at": when,
            "lead_time": lead_time,
            "parent_prediction": parent_prediction,
        }
        self.tasks[task_id]["annotations"].append(annotation)
        return annotation

    def task(self, task_id):
        return self.tasks[task_id]
