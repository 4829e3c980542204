CHECKS: list = []
