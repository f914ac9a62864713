from django.apps import AppConfig


class HumanEvalConfig(AppConfig):
    name = "humaneval"
    verbose_name = "Human evaluation (blind ratings of model answers, judge validation)"

    def ready(self):
        from exports import leaderboard

        from . import selectors

        # The leaderboard shows beside each judged score whether people validated its judge; exports
        # may import no app above it, so this stage hands it the function that says.
        leaderboard.register_validation_finder(selectors.validations_for_release)
        leaderboard.register_card_citations(selectors.card_citations)
