"""Benchmarks made from the AlignMMBench preset before it was Chinese: their categories and tasks
take the preset's Chinese names, with the English ones kept as aliases; a description, guideline
or judge rule still reading as the English preset wrote it becomes the Chinese text, its English
kept beside it. Texts a researcher changed stay as they are. (A snapshot of the preset as of this
migration: the preset module may change later.)"""

from django.db import migrations

CATEGORIES = {'Dialogue Context': '对话上下文', 'Perception & Understanding': '感知与理解', 'Reasoning & Analysis': '推理与分析'}

TASKS = {'Description': {'name': '描述',
                 'description': ('Describe an image in full: objects, scene, mood, text.', '完整描述一张图片：物体、场景、氛围和文字。'),
                 'guideline': ('Ask for a description; the reference must cover every visible element a judge would need.',
                               '请模型描述图片；参考答案要写出评委不看图也需要知道的每一个可见元素。'),
                 'judge_rules': ('', '')},
 'Recognition': {'name': '识别',
                 'description': ('Name objects, species, places, people or brands.', '说出物体、物种、地点、人物或品牌。'),
                 'guideline': ('Ask what something is; the reference names it precisely and says how it can be told apart.',
                               '问图中某物是什么；参考答案准确说出它的名称，并说明凭什么认出它。'),
                 'judge_rules': ('', '')},
 'Counting': {'name': '计数',
              'description': ('Count instances of something in the image.', '数出图中某类事物的数量。'),
              'guideline': ('Ask for a count of clearly countable things; the reference gives the exact number.',
                            '只问能数清楚的东西；参考答案给出确切数字。'),
              'judge_rules': ('Any number other than the reference count is wrong, however good the rest of the answer is.',
                              '数量与参考答案不同即为错误，其余部分写得再好也一样。')},
 'OCR': {'name': 'OCR',
         'description': ('Read, extract or use text in the image.', '读取、提取或利用图中的文字。'),
         'guideline': ('Ask to read or use text; the reference transcribes it exactly.', '请模型读出或使用图中文字；参考答案逐字照录原文。'),
         'judge_rules': ('Extracted text must match the reference; a faithful translation into another language is not an error.',
                         '提取的文字必须与参考答案一致；忠实地译成另一种语言不算错误。')},
 'Meme': {'name': '梗图理解',
          'description': ('Explain a meme or humorous image.', '解释梗图或幽默图片。'),
          'guideline': ('Ask why the image is funny; the reference explains the joke and its cultural background.',
                        '问这张图好笑在哪里；参考答案讲清笑点和需要的文化背景。'),
          'judge_rules': ('Credit the answer only if it explains why the image is funny, not just what it shows.',
                          '只有讲出图片为什么好笑的回答才得分，只描述画面内容的不算。')},
 'Knowledge': {'name': '知识',
               'description': ('Answer with world knowledge the image calls for.', '用图片所需的常识和世界知识作答。'),
               'guideline': ('Ask a question that needs knowledge beyond the pixels; the reference states the facts.',
                             '提出需要画面以外知识才能回答的问题；参考答案写明相关事实。'),
               'judge_rules': ('', '')},
 'Reasoning': {'name': '推理',
               'description': ('Infer something not directly visible.', '推断图中没有直接呈现的信息。'),
               'guideline': ('Ask for an inference; the reference gives the conclusion and the reasoning.',
                             '请模型做出推断；参考答案给出结论和推理过程。'),
               'judge_rules': ('Judge the final conclusion first; a wrong conclusion caps the rating whatever the reasoning.',
                               '先看最终结论：结论错误时，推理过程再好也不能给高分。')},
 'Chart': {'name': '图表',
           'description': ('Read and analyse charts and tables.', '读懂并分析图表和表格。'),
           'guideline': ('Ask about values, trends or comparisons in the chart; the reference gives the exact values.',
                         '问图表中的数值、趋势或比较；参考答案给出确切数值。'),
           'judge_rules': ('', '')},
 'Problem': {'name': '问题解答',
             'description': ('Solve a problem shown in the image (maths, physics, code).', '解答图中给出的题目（数学、物理、代码）。'),
             'guideline': ('Ask to solve it; the reference shows the steps and the result.', '请模型解题；参考答案写出步骤和结果。'),
             'judge_rules': ('', '')},
 'Comparison': {'name': '对比',
                'description': ('Compare objects or regions of the image.', '比较图中的物体或区域。'),
                'guideline': ('Ask for a comparison; the reference lists the differences and similarities.',
                              '请模型做比较；参考答案列出不同点和相同点。'),
                'judge_rules': ('', '')},
 'Writing': {'name': '写作',
             'description': ('Write creative or practical text inspired by the image.', '根据图片写创意或实用文字。'),
             'guideline': ('Ask for a poem, story, ad or email about the image; the reference is one good example.',
                           '请模型就图片写一首诗、一个故事、一则广告或一封邮件；参考答案是一个好的范例。'),
             'judge_rules': ('Judge a story or poem on fluency and relevance to the image and request, not closeness to the '
                             'reference.',
                             '故事或诗歌看是否通顺、是否切合图片和要求，而不看与参考答案是否相近。')},
 'Coherence': {'name': '对话连贯性',
               'description': ('Answer using earlier turns of the dialogue.', '结合前几轮对话作答。'),
               'guideline': ('Keep the real dialogue history; the final question depends on it.', '保留真实的对话历史；最后一个问题要依赖前文才能回答。'),
               'judge_rules': ('Check the answer uses the dialogue history and follows instructions given in earlier turns.',
                               '检查回答是否用到了对话历史，并遵守了前几轮提出的要求。')},
 'Incoherence': {'name': '对话纠错',
                 'description': ('An earlier assistant turn was wrong and the user says so.', '前一轮助手回答有误，用户指了出来。'),
                 'guideline': ('The history holds a wrong assistant turn that the user points out; the reference corrects it.',
                               '对话历史中有一轮错误的助手回答，用户指出了错误；参考答案给出更正。'),
                 'judge_rules': ('Check the answer notices the earlier mistake and corrects it instead of repeating it.',
                                 '检查回答是否发现了之前的错误并加以更正，而不是重复错误。')}}

TEXTS = ("description", "guideline", "judge_rules")


def to_chinese(apps, schema_editor):
    Category = apps.get_model("curation", "Category")
    Task = apps.get_model("curation", "Task")
    for category in Category.objects.filter(benchmark__preset="alignmmbench", name__in=CATEGORIES, name_en=""):
        if not Category.objects.filter(benchmark_id=category.benchmark_id, name=CATEGORIES[category.name]).exists():
            category.name_en, category.name = category.name, CATEGORIES[category.name]
            category.save(update_fields=["name", "name_en"])
    for task in Task.objects.filter(benchmark__preset="alignmmbench", name__in=TASKS, name_en=""):
        preset = TASKS[task.name]
        task.name_en, task.name = task.name, preset["name"]
        for field in TEXTS:
            english, chinese = preset[field]
            if english and getattr(task, field) == english:
                setattr(task, f"{field}_en", english)
                setattr(task, field, chinese)
        task.save()


def to_english(apps, schema_editor):
    Category = apps.get_model("curation", "Category")
    Task = apps.get_model("curation", "Task")
    for category in Category.objects.filter(benchmark__preset="alignmmbench", name_en__in=CATEGORIES):
        category.name, category.name_en = category.name_en, ""
        category.save(update_fields=["name", "name_en"])
    for task in Task.objects.filter(benchmark__preset="alignmmbench", name_en__in=TASKS):
        task.name, task.name_en = task.name_en, ""
        for field in TEXTS:
            if getattr(task, f"{field}_en"):
                setattr(task, field, getattr(task, f"{field}_en"))
                setattr(task, f"{field}_en", "")
        task.save()


class Migration(migrations.Migration):
    dependencies = [("curation", "0005_english_aliases")]

    operations = [migrations.RunPython(to_chinese, to_english)]
