"""The Streamlit page and its parts."""
