"""The shared model of the policy: settings, markers, facts, the project, entry points, feature records, the files of the repository."""
