"""Taxonomy presets of the benchmarks benchforge follows (docs/methods.md section 8).

Descriptions, keywords, guidelines and judge rules are our own wording. A preset is plain
data; `curation.services.load_preset` turns it into rows and can be re-run safely.
"""

from dataclasses import dataclass, field


@dataclass(frozen=True)
class TaskSpec:
    name: str
    description: str = ""
    keywords: tuple[str, ...] = ()
    guideline: str = ""
    judge_rules: str = ""
    quota: int | None = None


@dataclass(frozen=True)
class CategorySpec:
    name: str
    description: str = ""
    tasks: tuple[TaskSpec, ...] = ()
    children: tuple["CategorySpec", ...] = ()


@dataclass(frozen=True)
class Preset:
    key: str
    name: str
    description: str
    default_quota: int
    categories: tuple[CategorySpec, ...] = field(default_factory=tuple)

    def iter_tasks(self):
        def walk(cats):
            for cat in cats:
                yield from cat.tasks
                yield from walk(cat.children)

        return walk(self.categories)


def _t(name, description="", keywords=(), guideline="", judge_rules="", quota=None):
    return TaskSpec(name, description, tuple(keywords), guideline, judge_rules, quota)


ALIGNMMBENCH = Preset(
    key="alignmmbench",
    name="AlignMMBench",
    description="Chinese multimodal alignment: 13 tasks in three groups, seed questions expanded by LLM rewrites.",
    default_quota=80,
    categories=(
        CategorySpec(
            "Perception & Understanding",
            "Seeing what is in the image and explaining it.",
            tasks=(
                _t(
                    "Description",
                    "Describe an image in full: objects, scene, mood, text.",
                    ["poster", "scenery", "flowchart", "map", "cartoon"],
                    "Ask for a description; the reference must cover every visible element a judge would need.",
                ),
                _t(
                    "Recognition",
                    "Name objects, species, places, people or brands.",
                    ["animals", "plants", "landmarks", "logos"],
                    "Ask what something is; the reference names it precisely and says how it can be told apart.",
                ),
                _t(
                    "Counting",
                    "Count instances of something in the image.",
                    ["fruit stall", "collections", "crowds"],
                    "Ask for a count of clearly countable things; the reference gives the exact number.",
                    "Any number other than the reference count is wrong, however good the rest of the answer is.",
                ),
                _t(
                    "OCR",
                    "Read, extract or use text in the image.",
                    ["signs", "menus", "receipts", "handwriting"],
                    "Ask to read or use text; the reference transcribes it exactly.",
                    "Extracted text must match the reference; a faithful translation into another language is not an error.",
                ),
                _t(
                    "Meme",
                    "Explain a meme or humorous image.",
                    ["memes", "comics", "stickers"],
                    "Ask why the image is funny; the reference explains the joke and its cultural background.",
                    "Credit the answer only if it explains why the image is funny, not just what it shows.",
                ),
                _t(
                    "Knowledge",
                    "Answer with world knowledge the image calls for.",
                    ["artworks", "historic sites", "instruments"],
                    "Ask a question that needs knowledge beyond the pixels; the reference states the facts.",
                ),
            ),
        ),
        CategorySpec(
            "Reasoning & Analysis",
            "Drawing conclusions and producing content from the image.",
            tasks=(
                _t(
                    "Reasoning",
                    "Infer something not directly visible.",
                    ["puzzles", "scenes with clues", "cause and effect"],
                    "Ask for an inference; the reference gives the conclusion and the reasoning.",
                    "Judge the final conclusion first; a wrong conclusion caps the rating whatever the reasoning.",
                ),
                _t(
                    "Chart",
                    "Read and analyse charts and tables.",
                    ["subway map", "bar graph", "table", "line chart"],
                    "Ask about values, trends or comparisons in the chart; the reference gives the exact values.",
                ),
                _t(
                    "Problem",
                    "Solve a problem shown in the image (maths, physics, code).",
                    ["exam questions", "diagrams", "code screenshots"],
                    "Ask to solve it; the reference shows the steps and the result.",
                ),
                _t(
                    "Comparison",
                    "Compare objects or regions of the image.",
                    ["product shelves", "before and after", "two animals"],
                    "Ask for a comparison; the reference lists the differences and similarities.",
                ),
                _t(
                    "Writing",
                    "Write creative or practical text inspired by the image.",
                    ["landscapes", "events", "products"],
                    "Ask for a poem, story, ad or email about the image; the reference is one good example.",
                    "Judge a story or poem on fluency and relevance to the image and request, not closeness to the reference.",
                ),
            ),
        ),
        CategorySpec(
            "Dialogue Context",
            "Multi-turn dialogues taken from real use; never rewritten.",
            tasks=(
                _t(
                    "Coherence",
                    "Answer using earlier turns of the dialogue.",
                    ["multi-turn logs"],
                    "Keep the real dialogue history; the final question depends on it.",
                    "Check the answer uses the dialogue history and follows instructions given in earlier turns.",
                ),
                _t(
                    "Incoherence",
                    "An earlier assistant turn was wrong and the user says so.",
                    ["multi-turn logs"],
                    "The history holds a wrong assistant turn that the user points out; the reference corrects it.",
                    "Check the answer notices the earlier mistake and corrects it instead of repeating it.",
                ),
            ),
        ),
    ),
)


def _caps(*names, description=""):
    return tuple(_t(n, description) for n in names)


MLLM_BENCH = Preset(
    key="mllm-bench",
    name="MLLM-Bench",
    description="Six cognitive levels, 42 capabilities, 10 questions each, judged pairwise with per-sample criteria.",
    default_quota=10,
    # Level and capability names follow the released questions file so imports map one to one.
    categories=(
        CategorySpec(
            "Perception/Remembering",
            "Recognising what is there.",
            tasks=_caps(
                "General Object Recognition",
                "OCR",
                "Multilingual Text Recognition",
                "Action Recognition",
                "Symbol Recognition",
                "Food Recognition",
                "Landmark Recognition",
            ),
        ),
        CategorySpec(
            "Understanding",
            "Interpreting a scene and its meaning.",
            tasks=_caps(
                "Scene Understanding",
                "Attribute Recognition",
                "Image Topic Understanding",
                "Hidden Objects Recognition",
                "Facial Expression Recognition",
                "Emotion Understanding",
                "Multimodal Commonsense Understanding",
                "Joke and Meme Understanding",
                "Multilingual Multicultural Understanding",
                "Document Understanding",
                "Table Understanding",
            ),
        ),
        CategorySpec(
            "Applying",
            "Using what is seen to carry out a task.",
            tasks=_caps(
                "Object Localization",
                "Object Counting",
                "Spatial Relationship Understanding",
                "Medical Image Understanding",
                "Image Captioning",
                "Dense Captioning",
            ),
        ),
        CategorySpec(
            "Analyzing",
            "Relating parts and reasoning about them.",
            tasks=_caps(
                "Natural Relationship Understanding",
                "Chart Understanding",
                "Attribute Comparison",
                "Difference Finding",
                "Event Cause Reasoning",
                "Social Relation Reasoning",
                "Identity Reasoning",
                "Function Reasoning",
                "Physical Property Reasoning",
                "Visual Math Reasoning",
            ),
        ),
        CategorySpec(
            "Evaluating",
            "Judging quality, authenticity or ethics.",
            tasks=_caps("Image Quality Evaluation", "Damage Evaluation", "Fake Image Detection", "Ethical Problem Detection"),
        ),
        CategorySpec(
            "Creating",
            "Producing new content or predictions.",
            tasks=_caps("Action Prediction", "Trend Prediction", "Coding Capability with Vision", "Visual Storytelling"),
        ),
    ),
)


MMBENCH = Preset(
    key="mmbench",
    name="MMBench",
    description="Multiple-choice items in a three-level ability tree (20 leaves), scored with CircularEval.",
    default_quota=100,
    categories=(
        CategorySpec(
            "Perception",
            children=(
                CategorySpec(
                    "Coarse Perception",
                    tasks=_caps("Image Style", "Image Scene", "Image Emotion", "Image Quality", "Image Topic"),
                ),
                CategorySpec(
                    "Fine-grained Single-instance Perception",
                    tasks=_caps("Object Localization", "Attribute Recognition", "Celebrity Recognition", "OCR"),
                ),
                CategorySpec(
                    "Fine-grained Cross-instance Perception",
                    tasks=_caps("Spatial Relationship", "Attribute Comparison", "Action Recognition"),
                ),
            ),
        ),
        CategorySpec(
            "Reasoning",
            children=(
                CategorySpec(
                    "Attribute Reasoning", tasks=_caps("Physical Property Reasoning", "Function Reasoning", "Identity Reasoning")
                ),
                CategorySpec("Relation Reasoning", tasks=_caps("Social Relation", "Physical Relation", "Nature Relation")),
                CategorySpec("Logic Reasoning", tasks=_caps("Structuralized Image-Text Understanding", "Future Prediction")),
            ),
        ),
    ),
)


TOUCHSTONE = Preset(
    key="touchstone",
    name="TouchStone",
    description="Open dialogue abilities judged by a text-only LLM from fine-grained human image descriptions.",
    default_quota=34,
    categories=(
        CategorySpec("Basic Description", tasks=_caps("Simple Description", "Detailed Description")),
        CategorySpec(
            "Visual Recognition",
            tasks=_caps(
                "Attribute QA",
                "Movie/TV Recognition",
                "Art Recognition",
                "Landmark Recognition",
                "Celebrity Recognition",
                "Emotion Recognition",
                "Text Recognition",
                "Object Recognition",
                "Structured Content Recognition",
            ),
        ),
        CategorySpec(
            "Visual Comprehension",
            tasks=_caps(
                "Style Appreciation",
                "Abstract Image Understanding",
                "Meme Understanding",
                "Image Analysis",
                "Chart Analysis",
                "General Problem Solving",
                "Reasoning QA",
            ),
        ),
        CategorySpec(
            "Visual Storytelling",
            tasks=_caps("Email Writing", "Poetry Writing", "Story Writing", "Ads/Commodity Recommendation", "Brainstorming"),
        ),
        CategorySpec(
            "Multi-image Analysis",
            tasks=_caps("Compare Images", "Summarize Images", "Compare Commodities", "Step-by-step Analysis"),
        ),
    ),
)


PRESETS: dict[str, Preset] = {p.key: p for p in (ALIGNMMBENCH, MLLM_BENCH, MMBENCH, TOUCHSTONE)}
