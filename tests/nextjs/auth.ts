// The test's sign-in: one person, named by the environment (a real app uses Auth.js, Clerk, its own session).
export async function auth(): Promise<{ user: { id: string } } | null> {
  const id = process.env.DEMO_USER_ID;
  return id ? { user: { id } } : null;
}
