"""The arena on Ray (paper 004, section 4.1): env runners stepping slices of a run's env
copies (``runners.py``, driven through ``RayCollector``) and learners in actors of their
own (``learners.py``, driven through ``RayLearnerPool``). Ray is imported only where these
run (the ``ray`` extra)."""
